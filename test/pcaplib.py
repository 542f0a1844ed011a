"""Minimal pcap reading and writing with struct (scapy is too slow for
large captures): microsecond and nanosecond pcap, Ethernet link type."""
import struct

MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1


def write(path, frames, ts_ns=None, linktype=LINKTYPE_ETHERNET, nano=False):
    """frames: list of bytes; ts_ns: list of timestamps (ns) or None."""
    magic = MAGIC_NS if nano else MAGIC_US
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, linktype))
        for i, fr in enumerate(frames):
            t = ts_ns[i] if ts_ns else i * 1000
            sec, frac = divmod(t, 10**9)
            if not nano:
                frac //= 1000
            f.write(struct.pack("<IIII", sec, frac, len(fr), len(fr)))
            f.write(fr)


def read(path):
    """Returns (linktype, [(ts_ns, bytes), ...])."""
    with open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack_from("<I", data, 0)
    if magic in (MAGIC_US, MAGIC_NS):
        end = "<"
    else:
        magic, = struct.unpack_from(">I", data, 0)
        end = ">"
    if magic not in (MAGIC_US, MAGIC_NS):
        raise ValueError("%s: not a pcap file" % path)
    scale = 1 if magic == MAGIC_NS else 1000
    linktype, = struct.unpack_from(end + "I", data, 20)
    off, out = 24, []
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack_from(end + "IIII", data, off)
        off += 16
        out.append((sec * 10**9 + frac * scale, data[off:off + incl]))
        off += incl
    return linktype, out


def eth_ipv4(tos, length, seq, src=b"\x02\x00\x00\x00\x00\x01",
             dst=b"\x02\x00\x00\x00\x00\x02", proto=17):
    """An Ethernet/IPv4/UDP frame of `length` bytes (no FCS) whose UDP
    payload starts with a 4-byte sequence number."""
    ip_len = length - 14
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, ip_len, seq & 0xffff,
                                0, 64, proto, 0, bytes([10, 0, 0, 1]),
                                bytes([10, 0, 0, 2])))
    csum = _csum(hdr)
    hdr[10:12] = struct.pack("!H", csum)
    udp = struct.pack("!HHHH", 1000, 2000, ip_len - 20, 0)
    payload = struct.pack("!I", seq) + bytes((seq + i) & 0xff
                                             for i in range(ip_len - 32))
    return dst + src + b"\x08\x00" + bytes(hdr) + udp + payload


def _csum(b):
    s = 0
    for i in range(0, len(b), 2):
        s += (b[i] << 8) + (b[i + 1] if i + 1 < len(b) else 0)
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def seq_of(frame):
    """Sequence number of a frame built by eth_ipv4 (IPv4, no VLAN)."""
    return struct.unpack_from("!I", frame, 42)[0]


def tos_of(frame):
    return frame[15]
