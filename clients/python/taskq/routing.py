"""Which shard a task lives on, computed in Python.

With several shards behind a taskq_proxy database, every task lives on the
partition of its id's *route*: the part of the id before its first ``/``
(all of it when there is none), so that a run's steps (``<run>/...``), a
job's tasks and everything that shares a root live on one shard.  The
partition is PostgreSQL's ``hashtext(route) & (partitions - 1)``, as
PL/Proxy's ``RUN ON hashtext(...)`` picks it; the number of partitions is a
power of two.

A producer that goes to the shards directly, without the proxy, picks the
shard with ``partition_of(id, partitions)`` and the proxy's list of
partitions (``taskq_proxy.partitions()``, ordered by partition)::

    shards = conn.execute("SELECT connstr FROM taskq_proxy.partitions()"
                          " ORDER BY partition").fetchall()
    dsn = shards[taskq.partition_of(task_id, len(shards))][0]

``hashtext`` hashes the text's bytes in the database's encoding (under a
deterministic collation, such as the default one): this module hashes the
UTF-8 bytes, so the databases are to be UTF-8 (as PL/Proxy's routing by
hashtext also assumes that every partition and the proxy agree).
"""

__all__ = ["route", "partition_of", "hashtext"]

_MASK = 0xFFFFFFFF


def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & _MASK


def _mix(a, b, c):
    a = (a - c) & _MASK
    a ^= _rot(c, 4)
    c = (c + b) & _MASK
    b = (b - a) & _MASK
    b ^= _rot(a, 6)
    a = (a + c) & _MASK
    c = (c - b) & _MASK
    c ^= _rot(b, 8)
    b = (b + a) & _MASK
    a = (a - c) & _MASK
    a ^= _rot(c, 16)
    c = (c + b) & _MASK
    b = (b - a) & _MASK
    b ^= _rot(a, 19)
    a = (a + c) & _MASK
    c = (c - b) & _MASK
    c ^= _rot(b, 4)
    b = (b + a) & _MASK
    return a, b, c


def _final(a, b, c):
    c ^= b
    c = (c - _rot(b, 14)) & _MASK
    a ^= c
    a = (a - _rot(c, 11)) & _MASK
    b ^= a
    b = (b - _rot(a, 25)) & _MASK
    c ^= b
    c = (c - _rot(b, 16)) & _MASK
    a ^= c
    a = (a - _rot(c, 4)) & _MASK
    b ^= a
    b = (b - _rot(a, 14)) & _MASK
    c ^= b
    c = (c - _rot(b, 24)) & _MASK
    return a, b, c


def _hash_bytes(data):
    """PostgreSQL's hash_bytes (Bob Jenkins' 2006 hash, as PostgreSQL has
    it) on a little-endian machine, as an unsigned 32-bit value: the key is
    read as little-endian 32-bit words, three to a round; the last 0-11
    bytes are added the same way, except that the third word's lowest byte
    is left for the length (its bytes go in 8 bits higher)."""
    n = len(data)
    a = b = c = (0x9E3779B9 + n + 3923095) & _MASK
    pos = 0
    while n - pos >= 12:
        a = (a + int.from_bytes(data[pos:pos + 4], "little")) & _MASK
        b = (b + int.from_bytes(data[pos + 4:pos + 8], "little")) & _MASK
        c = (c + int.from_bytes(data[pos + 8:pos + 12], "little")) & _MASK
        a, b, c = _mix(a, b, c)
        pos += 12
    tail = bytes(data[pos:]) + bytes(12 - (n - pos))
    a = (a + int.from_bytes(tail[0:4], "little")) & _MASK
    b = (b + int.from_bytes(tail[4:8], "little")) & _MASK
    c = (c + (int.from_bytes(tail[8:12], "little") << 8)) & _MASK
    return _final(a, b, c)[2]


def hashtext(text):
    """PostgreSQL's ``hashtext(text)`` (a signed 32-bit int) of a str (its
    UTF-8 bytes) or of bytes."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    h = _hash_bytes(data)
    return h - (1 << 32) if h & 0x80000000 else h


def route(task_id):
    """The route of a task id: the part before its first ``/``, or the whole
    id when it has none (``taskq_proxy.route``)."""
    if not isinstance(task_id, str):
        raise TypeError("a task id is a str")
    return task_id.split("/", 1)[0]


def partition_of(task_id, partitions):
    """The partition (0 .. partitions - 1) of the task id: ``hashtext(route(id))
    & (partitions - 1)``, as ``taskq_proxy.partition_of`` computes it.
    partitions must be a power of two (ValueError otherwise)."""
    if (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1
            or partitions & (partitions - 1)):
        raise ValueError(f"partitions must be a power of two, not {partitions!r}")
    return hashtext(route(task_id)) & (partitions - 1)
