"""The counters of taskq.metrics(), sampled in the background for rates.

taskq's counters count since the server started, so a rate over the last
hour needs samples: one thread per database reads the counters every
`interval` seconds (15 by default) and adds each counter's increase since
the previous sample to the bucket of the current clock minute, in a ring of
minutes that covers 48 hours.  Rates over a window are sums of those
buckets; the chart of the last hour is the last 60 buckets.

Counter resets are handled as Prometheus' increase() does: a value lower
than the previous one means the counter restarted from 0, so the increase
is the new value.  A restart of the server (pg_postmaster_start_time()
changed) is a reset of every counter even where the new value is higher
than the old one, which increase() cannot see.  The first sample is a
baseline only: what happened before it is unknown.

Coverage: the console knows only what happened since its first sample
(`since`), and nothing of the time a database did not answer (`gaps`, a
sample more than three intervals after the previous one).  A window that
starts before `since` or holds a gap is partial, and says so.

For the "stuck" flag the sampler also keeps, per action, when its
completed counter last grew and since when its in-progress gauge has been
above 0 without a break, at the resolution of a sample.

Memory: per (counter, action) an array of 2,880 unsigned 32-bit counts
(11.5 KB), made when the action first counts something and dropped when it
has counted nothing for 48 hours.

Locking: one lock per Sampler guards every field; the thread writes under
it, the pages read under it (snapshot methods copy what they return).
"""

import array
import logging
import threading
import time

log = logging.getLogger("taskq.console.sampler")

# The counters sampled, by the name the pages use.
COUNTERS = {
    "enqueued": "taskq_tasks_inserted_total",
    "completed": "taskq_tasks_completed_total",
    "failed": "taskq_tasks_aborted_total",
    "expired": "taskq_tasks_expired_total",
}
MINUTES = 48 * 60                      # the ring's length: two days of minutes
_NAMES = {v: k for k, v in COUNTERS.items()}
_UINT_MAX = 2 ** 32 - 1

_SQL = ("SELECT m.name, COALESCE(m.labels->>'action', '') AS action, m.value,"
        " pg_catalog.pg_postmaster_start_time() AS started"
        " FROM taskq.metrics() AS m"
        " WHERE m.name = ANY(%s)")


def minute_of(t):
    """The clock minute (an integer: minutes since the epoch) of a time.time()."""
    return int(t // 60)


class Sampler:
    """The samples of one database.  `read` returns the rows of _SQL."""

    def __init__(self, read, interval=15.0, clock=time.time):
        self.read = read
        self.interval = float(interval)
        self.clock = clock
        self._lock = threading.Lock()
        self._prev = None          # {(counter, action): value} of the last sample
        self._started = None       # the server's start time at the last sample
        self._last_at = None       # time of the last sample
        self.since = None          # time of the first sample (the baseline)
        self.gaps = []             # [(from, to)]: no sample in between (bounded to 48 h)
        self._ring = {}            # (counter, action) -> array('I', MINUTES)
        self._ring_minute = None   # the minute the ring's newest bucket holds
        self._grew_at = {}         # action -> time its completed counter last grew
        self._busy_since = {}      # action -> first sample of an unbroken in_progress > 0
        self._last_error = None
        self._thread = None
        self._stop = threading.Event()

    # ------------------------------------------------------------- sampling

    def _advance(self, minute):
        """Move the ring's head to `minute`, zeroing the minutes skipped."""
        if self._ring_minute is None:
            self._ring_minute = minute
            return
        if minute <= self._ring_minute:
            return                 # same minute (or the clock went back: add to the newest)
        steps = min(minute - self._ring_minute, MINUTES)
        for arr in self._ring.values():
            for k in range(1, steps + 1):
                arr[(self._ring_minute + k) % MINUTES] = 0
        self._ring_minute = minute
        # an action that counted nothing for 48 h loses its arrays
        for key in [k for k, a in self._ring.items() if not any(a)]:
            del self._ring[key]

    def add(self, rows, now=None, in_progress=None):
        """One sample: rows of (name, action, value, started); in_progress
        {action: gauge} for the stuck flag (None: not read)."""
        now = self.clock() if now is None else now
        values = {}
        started = None
        for r in rows:
            counter = _NAMES.get(r["name"])
            if counter is not None:
                values[(counter, r["action"])] = r["value"]
            started = r["started"]
        with self._lock:
            minute = minute_of(now)
            self._advance(minute)
            if self._prev is None:
                self.since = now
            else:
                if self._last_at is not None and now - self._last_at > 3 * self.interval:
                    self.gaps.append((self._last_at, now))
                restarted = started is not None and self._started is not None \
                    and started != self._started
                for key, value in values.items():
                    old = self._prev.get(key, 0.0)
                    inc = value if (restarted or value < old) else value - old
                    if inc > 0:
                        arr = self._ring.get(key)
                        if arr is None:
                            arr = self._ring[key] = array.array("I", bytes(4 * MINUTES))
                        slot = minute % MINUTES
                        arr[slot] = min(_UINT_MAX, arr[slot] + int(round(inc)))
                        if key[0] == "completed":
                            self._grew_at[key[1]] = now
            self._prev = values
            self._started = started if started is not None else self._started
            self._last_at = now
            horizon = now - MINUTES * 60
            self.gaps = [g for g in self.gaps if g[1] > horizon]
            if in_progress is not None:
                for action, n in in_progress.items():
                    if n > 0:
                        self._busy_since.setdefault(action, now)
                for action in [a for a in self._busy_since if not in_progress.get(a)]:
                    del self._busy_since[action]
            for action in [a for a, t in self._grew_at.items() if t < horizon]:
                del self._grew_at[action]

    def sample(self):
        """Read the database once and add the sample (raises on error)."""
        names = list(COUNTERS.values()) + ["taskq_tasks_in_progress"]
        rows = self.read(_SQL, (names,))
        counters = [r for r in rows if r["name"] != "taskq_tasks_in_progress"]
        busy = {r["action"]: r["value"] for r in rows if r["name"] == "taskq_tasks_in_progress"}
        self.add(counters, in_progress=busy)

    def _run(self):
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                self.sample()
                if self._last_error is not None:
                    log.info("sampling again after: %s", self._last_error)
                self._last_error = None
            except Exception as e:         # noqa: BLE001 — a database down is a gap, not an end
                msg = str(e).strip().splitlines()[0] if str(e) else type(e).__name__
                if msg != self._last_error:
                    log.warning("cannot sample the counters: %s", msg)
                self._last_error = msg
            self._stop.wait(max(0.05, self.interval - (time.monotonic() - t0)))

    def start(self, name="sampler"):
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    # ------------------------------------------------------------- reading

    @property
    def last_error(self):
        return self._last_error

    def _sum(self, key, first, last):
        """The counts of minutes first..last (inclusive) of a key; lock held."""
        arr = self._ring.get(key)
        if arr is None or self._ring_minute is None:
            return 0
        first = max(first, self._ring_minute - MINUTES + 1)
        last = min(last, self._ring_minute)
        if first > last:
            return 0
        a, b = first % MINUTES, last % MINUTES
        if a <= b:
            return sum(arr[a:b + 1])
        return sum(arr[a:]) + sum(arr[:b + 1])

    def window(self, minutes, back=0, now=None):
        """The window of `minutes` clock minutes ending `back` windows ago (0:
        the last `minutes` minutes, the current one included; 1: the window
        before it): {"from", "to", "covered_from" (None: whole), "seen"
        (False: nothing of it sampled), "gaps", "counts": {(counter, action): n}}."""
        now = self.clock() if now is None else now
        last = minute_of(now) - back * minutes
        first = last - minutes + 1
        start, end = first * 60, min((last + 1) * 60, now)
        with self._lock:
            since = self.since
            seen = since is not None and since < end
            covered_from = None
            if seen and since > start:
                covered_from = since
            gaps = [g for g in self.gaps if g[1] > start and g[0] < end]
            counts = {}
            if seen:
                for key in self._ring:
                    n = self._sum(key, first, last)
                    if n:
                        counts[key] = n
        return {"from": start, "to": end, "minutes": minutes, "seen": seen,
                "covered_from": covered_from, "gaps": gaps, "counts": counts}

    def per_minute(self, counter, action, minutes=60, now=None):
        """The counts of the last `minutes` clock minutes (oldest first), and
        the index of the first minute sampled (minutes before it: unknown)."""
        now = self.clock() if now is None else now
        last = minute_of(now)
        with self._lock:
            arr = self._ring.get((counter, action))
            out = []
            for m in range(last - minutes + 1, last + 1):
                ok = arr is not None and self._ring_minute is not None \
                    and self._ring_minute - MINUTES < m <= self._ring_minute
                out.append(arr[m % MINUTES] if ok else 0)
            since = self.since
        if since is None:
            first_seen = minutes
        else:
            first_seen = max(0, min(minutes, minute_of(since) - (last - minutes + 1)))
        return out, first_seen

    def stuck(self, action, in_progress, seconds, now=None):
        """True if the action has had tasks in progress (gauge > 0 in every
        sample) and completed none for `seconds`, as far as the samples saw."""
        now = self.clock() if now is None else now
        if not in_progress:
            return False
        with self._lock:
            if self.since is None or now - self.since < seconds:
                return False           # not watched long enough to say
            busy = self._busy_since.get(action)
            if busy is None or now - busy < seconds:
                return False
            grew = self._grew_at.get(action)
            return grew is None or now - grew >= seconds

    def last_completed(self, action):
        with self._lock:
            return self._grew_at.get(action)
