"""Reference models of the `pie` and `red` queue kinds, written from their
specifications (RFC 8033's pseudo-code with Linux's fixed point; Floyd
and Jacobson's RED as Linux's red.h and tc_red.c compute it), for the
offline tests (test_aqm.py).

The models are driven by events on the offline tool's virtual clock:
each arrival (time, length, ECN field) and each departure (the time a
frame left the queue, read from the output capture: behind tbf and with
no netem, a frame leaves the queue when it leaves the shaper). They
decide each arrival's fate -- "q" queued, "m" marked CE, "d" dropped --
and check at each departure that the frame leaving is the one at their
head, so a model that disagreed with the shaper once would fail there.

Random numbers: the shaper's kinds draw event n of a seeded stream
(lib/core/shp_rand.h: SplitMix64, counter-based); draw() below is the
same function, so a model given the same --seed makes the same draws.
"""
import math

M64 = (1 << 64) - 1
GAMMA = 0x9e3779b97f4a7c15
SEED_DEFAULT = 0x6e6574656d5eed


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def rand_key(seed, stream):
    return mix64(mix64((seed + GAMMA) & M64) ^
                 mix64(((stream + 1) * 0xd1342543de82ef95) & M64))


def draw(key, n):
    """shp_rand_at(key, n) then shp_rand_u64."""
    x = key ^ mix64((n * GAMMA + key) & M64)
    return mix64((x + GAMMA) & M64)


def stream_key(seed, stream, port=0):
    return rand_key(rand_key(seed, port), stream)


def ecn_capable(ecn):
    return ecn != 0


# ------------------------------------------------------------------ PIE

MAX_PROB = M64 >> 8
TICK = 6                       # ns >> 6: Linux's psched ticks
TICKS_PER_SEC = 10**9 >> TICK
MTU = 1514


class Pie:
    """RFC 8033 (timestamp delay, the default), Linux's arithmetic."""

    def __init__(self, seed, limit=1000, target_ns=15 * 10**6,
                 tupdate_ns=15 * 10**6, alpha=2, beta=20, ecn=False,
                 bytemode=False):
        self.limit, self.target = limit, target_ns >> TICK
        self.tupdate, self.alpha, self.beta = tupdate_ns, alpha, beta
        self.ecn, self.bytemode = ecn, bytemode
        self.key = stream_key(seed, 0x706965)
        self.draws = 0
        self.q = []                # (id, len, arrival ns)
        self.backlog = 0
        self.prob = 0
        self.qdelay = self.qdelay_old = 0
        self.next_update = None
        self.restart()

    def restart(self):
        self.burst = (150 * 10**6) >> TICK
        self.dq_tstamp = None
        self.accu = 0

    def state(self):
        return (self.qdelay, self.qdelay_old, self.burst, self.dq_tstamp,
                self.prob, self.accu)

    def update(self):
        qdelay, old, target = self.qdelay, self.qdelay_old, self.target
        decay = not (qdelay == 0 and self.backlog != 0)
        a = (self.alpha * (MAX_PROB // TICKS_PER_SEC)) >> 4
        b = (self.beta * (MAX_PROB // TICKS_PER_SEC)) >> 4
        # auto-tuning: RFC 8033 4.2's scaling by the range of p
        if self.prob < MAX_PROB // 10:
            a, b = a >> 1, b >> 1
            power = 100
            while self.prob < MAX_PROB // power and power <= 10**6:
                a, b = a >> 2, b >> 2
                power *= 10
        delta = a * (qdelay - target) + b * (qdelay - old)
        if delta > MAX_PROB // 50 and self.prob >= MAX_PROB // 10:
            delta = (MAX_PROB // 100) * 2
        if qdelay > (250 * 10**6) >> TICK:
            delta += MAX_PROB // 50
        p = self.prob + delta
        if p > MAX_PROB:           # RFC 8033: p within [0, 1]
            p, decay = MAX_PROB, False
        elif p < 0:
            p = 0
        if qdelay == 0 and old == 0 and decay:
            p -= p // 64
        self.prob = p
        if qdelay < target // 2 and old < target // 2 and p == 0:
            self.restart()
        self.qdelay_old = qdelay

    def catch_up(self, now):
        if self.next_update is None:
            self.next_update = (now // self.tupdate + 1) * self.tupdate
            return
        while self.next_update <= now:
            before = self.state()
            self.update()
            self.next_update += self.tupdate
            if before == self.state() and self.next_update <= now:
                self.next_update += ((now - self.next_update) //
                                     self.tupdate + 1) * self.tupdate

    def drop_early(self, length):
        if self.burst > 0:
            return False
        if self.qdelay < self.target // 2 and self.prob < MAX_PROB // 5:
            return False
        if self.backlog < 2 * MTU:
            return False
        local = self.prob
        if self.bytemode and length <= MTU:
            local = length * (local // MTU)
        self.accu = 0 if local == 0 else self.accu + local
        if self.accu < (MAX_PROB // 100) * 85:
            return False
        if self.accu >= (MAX_PROB // 2) * 17:
            return True
        r = draw(self.key, self.draws) >> 8
        self.draws += 1
        if r < local:
            self.accu = 0
            return True
        return False

    def arrive(self, now, ident, length, ecn):
        self.catch_up(now)
        if len(self.q) >= self.limit:
            self.accu = 0
            return "d"
        fate = "q"
        if self.drop_early(length):
            if self.ecn and self.prob <= MAX_PROB // 10 and \
                    ecn_capable(ecn):
                fate = "m"
            else:
                self.accu = 0
                return "d"
        self.q.append((ident, length, now))
        self.backlog += length
        return fate

    def depart(self, now):
        self.catch_up(now)
        ident, length, t = self.q.pop(0)
        self.backlog -= length
        now_t = now >> TICK
        self.qdelay = max(now_t - (t >> TICK), 0)
        dtime = 0
        if self.dq_tstamp is not None:
            dtime = (now_t - self.dq_tstamp) & 0xffffffff
        self.dq_tstamp = now_t
        if self.backlog == 0:
            self.qdelay = 0
        if dtime:
            self.burst = max(self.burst - dtime, 0)
        return ident


# ------------------------------------------------------------------ RED

def red_params(limit, avpkt, qmin=0, qmax=0, burst=0, probability=0.02,
               rate=1250000):
    """tc's derivations (q_red.c, tc_red.c): thresholds, burst, Wlog,
    Plog, Scell_log and the idle table."""
    if not qmax:
        qmax = qmin * 3 if qmin else limit // 4
    if not qmin:
        qmin = qmax // 3
    if not burst:
        burst = (2 * qmin + qmax) // (3 * avpkt)
    a = burst + 1 - qmin / avpkt
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - math.pow(1 - w, burst)) / w:
            break
        w /= 2
    xmit = float(int(int(1e6 * (avpkt / rate)) * 15.625))
    lw = -math.log(1.0 - 1.0 / (1 << wlog)) / xmit
    maxtime = 31 / lw
    clog = next(c for c in range(32) if maxtime / math.ldexp(1, c) < 512)
    stab = [0] + [min(int(math.ldexp(i, clog) * lw), 31)
                  for i in range(1, 255)] + [31]
    return dict(limit=limit, qmin=qmin, qmax=qmax, wlog=wlog,
                scell=clog, stab=stab,
                max_p=int(probability * 4294967296.0))


class Red:
    def __init__(self, seed, par, ecn=False, harddrop=False, nodrop=False):
        self.p, self.ecn = par, ecn
        self.harddrop, self.nodrop = harddrop, nodrop
        w = par["wlog"]
        self.qth_min, self.qth_max = par["qmin"] << w, par["qmax"] << w
        delta = max(par["qmax"] - par["qmin"], 1)
        self.max_p_delta = max(par["max_p"] // delta, 1)
        self.key = stream_key(seed, 0x726564)
        self.draws = 0
        self.q, self.backlog = [], 0
        self.qavg, self.qcount, self.qR = 0, -1, 0
        self.idle_start = None
        self.avgs = []             # (avg bytes, fate) of each arrival

    def random(self):
        r = draw(self.key, self.draws) >> 32
        self.draws += 1
        return r // self.max_p_delta

    def idle_avg(self, now):
        us = min(max(now - self.idle_start, 0) // 1000,
                 255 << self.p["scell"])
        shift = self.p["stab"][(us >> self.p["scell"]) & 255]
        if shift:
            return self.qavg >> shift
        dec = (self.qavg * us) >> self.p["scell"]
        return self.qavg - dec if dec < self.qavg >> 1 else self.qavg >> 1

    def action(self):
        if self.qavg < self.qth_min:
            self.qcount = -1
            return "ok"
        if self.qavg >= self.qth_max:
            self.qcount = -1
            return "hard"
        self.qcount += 1
        if self.qcount:
            if ((self.qavg - self.qth_min) >> self.p["wlog"]) * \
                    self.qcount >= self.qR:
                self.qcount = 0
                self.qR = self.random()
                return "prob"
        else:
            self.qR = self.random()
        return "ok"

    def arrive(self, now, ident, length, ecn):
        if self.idle_start is not None:
            self.qavg = self.idle_avg(now)
            self.idle_start = None
        else:
            self.qavg += self.backlog - (self.qavg >> self.p["wlog"])
        act = self.action()
        fate = "q"
        if act == "prob":
            if not self.ecn:
                fate = "early"
            elif ecn_capable(ecn):
                fate = "m"
            elif not self.nodrop:
                fate = "early"
        elif act == "hard":
            if self.harddrop or not self.ecn:
                fate = "forced"
            elif ecn_capable(ecn):
                fate = "m"
            elif not self.nodrop:
                fate = "forced"
        if fate in ("q", "m") and self.backlog + length > self.p["limit"]:
            fate = "limit"
        self.avgs.append((self.qavg >> self.p["wlog"], fate))
        if fate in ("q", "m"):
            self.q.append((ident, length))
            self.backlog += length
        elif not self.q:
            self.idle_start = now
        return fate

    def depart(self, now):
        ident, length = self.q.pop(0)
        self.backlog -= length
        if not self.q:
            self.idle_start = now
        return ident


def run(model, arrivals, departures):
    """arrivals: [(ns, id, len, ecn)] in time order; departures: [ns] of
    the output frames, in order. An arrival goes before a departure at
    its time (the tool enqueues it, then drains the chain).
    Returns ({id: fate}, [id of each departure, as the model's head])."""
    fates, left = {}, []
    i = j = 0
    while i < len(arrivals) or j < len(departures):
        if j < len(departures) and (i == len(arrivals) or
                                    departures[j] < arrivals[i][0]):
            left.append(model.depart(departures[j]))
            j += 1
        else:
            t, ident, length, ecn = arrivals[i]
            fates[ident] = model.arrive(t, ident, length, ecn)
            i += 1
    return fates, left
