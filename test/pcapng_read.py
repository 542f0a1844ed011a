"""A reader of the pcapng files dpdk-shaper writes (drop captures): just
enough of the format (little-endian, Enhanced Packet Blocks with an
opt_comment) to check them beside tshark's reading."""
import struct


def read(path):
    """[(interface, ts_ns, orig_len, data, comment), ...], the interfaces'
    tsresol checked to be 9 (ns)."""
    with open(path, "rb") as f:
        buf = f.read()
    out, off, ifs = [], 0, []
    while off < len(buf):
        btype, blen = struct.unpack_from("<II", buf, off)
        assert blen >= 12 and blen % 4 == 0 and off + blen <= len(buf)
        assert struct.unpack_from("<I", buf, off + blen - 4)[0] == blen
        body = buf[off + 8:off + blen - 4]
        if btype == 1:
            opts = _opts(body[8:])
            assert opts.get(9) == b"\x09", opts
            ifs.append(opts)
        elif btype == 6:
            iface, hi, lo, cap, orig = struct.unpack_from("<IIIII", body)
            assert iface < len(ifs)
            data = body[20:20 + cap]
            opts = _opts(body[20 + (cap + 3) // 4 * 4:])
            out.append((iface, hi << 32 | lo, orig, data,
                        opts.get(1, b"").decode()))
        off += blen
    return out


def _opts(b):
    opts, off = {}, 0
    while off + 4 <= len(b):
        code, n = struct.unpack_from("<HH", b, off)
        if code == 0:
            break
        opts[code] = b[off + 4:off + 4 + n]
        off += 4 + (n + 3) // 4 * 4
    return opts


def comment_fields(comment):
    """'cause=x port=0 shard=1' -> {'cause': 'x', 'port': '0', ...}"""
    return dict(w.split("=", 1) for w in comment.split())
