"""Splitting a run across machines: `--shard i/n` runs the cases whose key hashes to shard i.

The split is by a stable hash of the case key (not by position) so that a case's shard
depends on nothing but its key and n: adding or deleting cases never moves the others, and
`evalctl.baselines.scope` can tell from a key alone whether a shard would have run it (a
deleted case still shows up as orphaned in the shard that owned it). With few cases the
shards are less even than a round-robin split would make them; at the sizes worth sharding
the difference is noise.
"""

from __future__ import annotations

import hashlib
import re

from evalctl.errors import BadInputError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(spec: str) -> tuple[int, int]:
    """`"2/3"` -> (2, 3); shards are numbered from 1, like a CI matrix usually is."""
    match = _SPEC.match(spec)
    if not match:
        raise BadInputError(f"expected i/n such as 1/3, got {spec!r}", field="--shard")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise BadInputError(
            f"shard {index}/{count} does not exist: i must be between 1 and n", field="--shard"
        )
    return index, count


def shard_of(key: str, count: int) -> int:
    """The 1-based shard that runs case `key` when the run is split `count` ways."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(key: str, index: int, count: int) -> bool:
    return shard_of(key, count) == index
