"""The one cache of expensive shared things in a process: loaded models, the distilled draft, the target's
4-bit copy and its lean decode step, and which model pairs have been warmed up.

They live here rather than in scattered `functools.lru_cache`s, behind one object that can be
inspected and emptied (after an out-of-memory error, say). Entries hold no per-run state, so pipelines share them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")


class WeightsCache:
    """A small least-recently-used map from a key to a built object; `get` builds on a miss.

    >>> cache = WeightsCache(max_entries=2)
    >>> cache.get(("model", "a"), lambda: 1), cache.get(("model", "a"), lambda: 2)
    (1, 1)
    """

    def __init__(self, max_entries: int = 8):
        self.max_entries = max_entries  # models are a few hundred MB each; a handful covers every pair in use
        self._entries: OrderedDict[Hashable, object] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        value = build()
        self._entries[key] = value
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def keys(self) -> list:
        return list(self._entries)

    def clear_key(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


WEIGHTS = WeightsCache()  # the process's cache; pass another WeightsCache to isolate (tests do)
