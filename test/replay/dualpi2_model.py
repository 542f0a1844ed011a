"""A reference model of DualPI2 written from RFC 9332, Appendix A
(Figures 2, 3 and 4: dualpi2_enqueue, dualpi2_dequeue, dualpi2_update),
to check the `dualpi2` queue kind's decisions packet by packet.

Where the RFC leaves a choice to the implementation, the model takes the
one Linux's sch_dualpi2 took, as the queue kind does, and says so:

- Numbers. p' is a 32-bit fraction (2^32 - 1 is 1), alpha and beta are
  given in 1/256 Hz and scaled to p' per ns in units of 1/64, as the
  kernel keeps them: the RFC's `p' += alpha * (qdelay - target) +
  beta * (qdelay - prev_qdelay)` in integers, so that model and kernel
  agree to the last bit instead of to a float's rounding.
- Random numbers. The RFC's `rand()` is the queue's seeded stream: the
  n-th decision that draws (the queues hold 2 MTUs or more, the RFC's
  `minth`-like guard of Linux) uses SplitMix64 at (key, n), and each
  roll takes the upper 32 bits of the next draw, marking when draw <= p
  (Linux's dualpi2_roll). p_C = p'^2 is two rolls at p' (Linux), not one
  at p'^2. The stream is lib/core/shp_rand.h, reimplemented below from
  its published definition: the model and the program share the seed,
  not the code.
- The native L AQM is the step (the RFC's Figure 3 ramp with minTh =
  maxTh = step_thresh): marked when the sojourn passes step_thresh.
- The scheduler is the kernel's byte WRR with classic_protection
  (RFC's "time-shifted FIFO" is an alternative the RFC allows).
- The update runs at every multiple of tupdate on the virtual clock,
  before anything else that happens at the same nanosecond.
- Overload (k * p' > 1): C and L packets are dropped at p'^2 (L ones
  only with drop_on_overload, else marked).

Timing: the model does not simulate the link. It is given the output
capture's departure times: after a frame leaves, the link takes the next
packet from the queues at once (tbf peeks its child as it sends), or,
when the queues were empty, the packet is taken when it arrives. The
model then says which frames survive and which carry CE, and the test
checks that the output capture holds exactly those.
"""

M64 = (1 << 64) - 1
GAMMA = 0x9e3779b97f4a7c15
MAX_PROB = (1 << 32) - 1
MTU = 1514
SEED_DEFAULT = 0x6475616c70693200     # the kind's own default seed


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def rand_key(seed, stream):
    return mix64(mix64((seed + GAMMA) & M64) ^
                 mix64(((stream + 1) * 0xd1342543de82ef95) & M64))


class Stream:
    """The draws of one decision: generator n of stream key."""

    def __init__(self, key, n):
        self.x = key ^ mix64((n * GAMMA + key) & M64)

    def u32(self):
        self.x = (self.x + GAMMA) & M64
        return mix64(self.x) >> 32


def scale(param):
    """alpha/beta in 1/256 Hz to p' per ns in units of 1/64."""
    return ((param * MAX_PROB) >> 2) // 1000000000


class Params:
    def __init__(self, target_us=15000, tupdate_us=16000, alpha=41,
                 beta=819, k=2, step_us=1000, min_qlen_step=0, wc=10,
                 any_ect=False, drop_overload=True, seed=SEED_DEFAULT,
                 port=0, step_pkts=None, drop_early=False):
        self.target = target_us * 1000
        self.tupdate = tupdate_us * 1000
        self.alpha, self.beta = scale(alpha), scale(beta)
        self.k = k
        self.step = step_us * 1000
        self.step_pkts = step_pkts      # step_thresh in packets instead
        self.min_qlen_step = min_qlen_step
        self.wc, self.wl = wc, 100 - wc
        self.mask = 3 if any_ect else 1
        self.drop_overload = drop_overload
        self.drop_early = drop_early    # judge at enqueue (drop_enqueue)
        self.key = rand_key(rand_key(seed, port), SEED_DEFAULT)


class DualPI2:
    def __init__(self, prm):
        self.p = prm
        self.lq, self.cq = [], []        # [arrival, ecn, len, id, step]
        self.prob = 0
        self.prev_qdelay = 0
        self.next_update = None
        self.credit_init = MTU * (prm.wc - prm.wl)
        self.credit = self.credit_init
        self.rolls = 0
        self.backlog = 0
        # what happened to each packet: "drop" or "mark" or "pass"
        self.fate = {}
        self.taken = {}       # when the link took each packet that left

    # --- RFC Figure 4: dualpi2_update, every tupdate
    def update(self, t):
        def qd(q):
            return t - q[0][0] if q and t > q[0][0] else 0
        qdelay = max(qd(self.lq), qd(self.cq))
        p = self.p
        delta = (qdelay - p.target) * p.alpha + \
            (qdelay - self.prev_qdelay) * p.beta
        self.prev_qdelay = qdelay
        if delta > 0:
            new = self.prob + (delta >> 6)
        else:
            new = self.prob - ((-delta) >> 6)
        new = min(max(new, 0), MAX_PROB)
        if not p.drop_overload:
            new = min(new, MAX_PROB // p.k)
        self.prob = new

    def advance(self, now):
        tu = self.p.tupdate
        if self.next_update is None:
            self.next_update = (now // tu + 1) * tu
        while self.next_update <= now:
            self.update(self.next_update)
            self.next_update += tu

    # --- RFC Figure 2: dualpi2_enqueue (classification by ECN)
    def enqueue(self, now, pid, ecn, length):
        self.advance(now)
        in_l = bool(ecn & self.p.mask)
        fate = "pass"
        if self.p.drop_early:
            fate = self.judge(in_l, ecn)
            if fate == "drop":
                self.fate[pid] = "drop"
                return
        if in_l:
            step = len(self.lq) >= self.p.min_qlen_step
            self.lq.append([now, ecn, length, pid, step, fate])
        else:
            self.cq.append([now, ecn, length, pid, False, fate])
        self.backlog += length

    # --- RFC Figure 3: dualpi2_dequeue, one packet taken at `now`;
    # returns its id, or None (queues empty)
    def dequeue(self, now):
        self.advance(now)
        p = self.p
        while True:
            change = 0
            if self.lq and (not self.cq or self.credit <= 0):
                pkt, in_l = self.lq.pop(0), True
                if self.cq:
                    change = p.wc
            elif self.cq:
                pkt, in_l = self.cq.pop(0), False
                if self.lq:
                    change = -p.wl
            else:
                self.credit = self.credit_init
                return None
            arr, ecn, length, pid, step, fate = pkt
            self.backlog -= length
            change *= length
            if not p.drop_early:
                fate = self.judge(in_l, ecn)
            if fate == "drop":
                self.fate[pid] = "drop"
                continue
            # the L queue's sojourn, or its length after this packet
            over = len(self.lq) > p.step_pkts if p.step_pkts else \
                now - arr > p.step
            if in_l and step and over:
                if ecn == 0:
                    self.fate[pid] = "drop"
                    continue
                fate = "mark"
            self.fate[pid] = fate
            self.taken[pid] = now
            self.credit += change
            return pid

    def judge(self, in_l, ecn):
        """PI2's mark/drop: p_C = p'^2 for the C queue, p_L = k * p' for
        the L queue (the coupling), overload when p_L passes 1."""
        p = self.p
        if self.backlog < 2 * MTU:
            return "pass"
        r = Stream(p.key, self.rolls)
        self.rolls += 1
        lp = self.prob * p.k
        overload = lp > MAX_PROB

        def roll(prob):
            return r.u32() <= prob

        if not in_l:
            if roll(self.prob) and roll(self.prob):
                if overload or ecn == 0:
                    return "drop"
                return "mark"
            return "pass"
        if overload:
            if p.drop_overload and roll(self.prob) and roll(self.prob):
                return "drop"
            return "mark"
        return "mark" if roll(lp) else "pass"


def replay(prm, arrivals, departures):
    """arrivals: [(t, id, ecn, len)] by time; departures: {id: t} of the
    frames that left (the output capture). Returns the model's fate of
    every packet, {id: "drop"|"mark"|"pass"}, when the link took each
    that left, and the first packet whose departure the capture lacks
    (None if every survivor left)."""
    q = DualPI2(prm)
    i, n = 0, len(arrivals)
    free = 0              # when the link takes the next packet
    missing = None
    while i < n or q.lq or q.cq:
        # arrivals up to the moment the link takes its next packet
        while i < n and arrivals[i][0] <= free:
            t, pid, ecn, length = arrivals[i]
            q.enqueue(t, pid, ecn, length)
            i += 1
        if not (q.lq or q.cq):
            # the link finds the queues empty (the WRR credit starts
            # over) and takes the next packet when it arrives
            if free:
                q.dequeue(free)
            t, pid, ecn, length = arrivals[i]
            q.enqueue(t, pid, ecn, length)
            i += 1
            free = t
        pid = q.dequeue(free)
        if pid is None:
            continue
        if pid not in departures:
            missing = pid
            break
        free = departures[pid]
    return q.fate, q.taken, missing
