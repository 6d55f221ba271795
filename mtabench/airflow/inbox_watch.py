"""The inbox watcher: an Airflow 3 event trigger (an AssetWatcher on the inbox Asset, run by the
triggerer) that schedules mtabench_inbox as soon as a run dropped into the inbox is whole.

It polls the inbox every `poll_s` seconds (a walk of names and stats, no file read but a new
bundle's, once) and fires when the set of whole runs changes: one more, one changed, one taken
out. A run still being copied in is not whole (ingest/settled.py) and fires nothing until it
is; the DAG's ingest applies the same rule, so a scheduled run does not take it half either.
On start (the triggerer starts or restarts) it fires once if the inbox holds any whole run: a
drop made while no watcher ran is not missed; the DAG run then finds nothing new and skips.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from ingest import settled

SHOWN = 20  # run keys named in an event's payload at most


class InboxTrigger(BaseEventTrigger):
    """Fires each time the inbox's set of whole runs changes (and once on start if it has any)."""

    def __init__(self, inbox: str, settle_s: float = settled.DEFAULT_SETTLE_S, poll_s: float = 1.0):
        super().__init__()
        self.inbox = inbox
        self.settle_s = float(settle_s)
        self.poll_s = float(poll_s)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "mtabench.airflow.inbox_watch.InboxTrigger",
            {"inbox": self.inbox, "settle_s": self.settle_s, "poll_s": self.poll_s},
        )

    async def run(self):
        inbox = Path(self.inbox)
        seen: dict[str, tuple] | None = None
        readable: dict[tuple, bool] = {}
        while True:
            if inbox.is_dir():
                whole, copying = await asyncio.to_thread(settled.whole_runs, inbox, self.settle_s, readable)
                if whole != seen and (seen is not None or whole):
                    before = seen or {}
                    changed = sorted(k for k in whole if before.get(k) != whole[k])
                    gone = sorted(set(before) - set(whole))
                    self.log.info(
                        "inbox %s: %d whole run(s), %d new or changed, %d taken out, %d being copied in",
                        *(inbox, len(whole), len(changed), len(gone), len(copying)),
                    )
                    yield TriggerEvent(
                        {
                            "inbox": str(inbox),
                            "whole": len(whole),
                            "changed": changed[:SHOWN],
                            "gone": gone[:SHOWN],
                            "copying": sorted(copying)[:SHOWN],
                        }
                    )
                    # only the bundles still there: the cache does not grow without end
                    there = set(whole) | set(copying)
                    readable = {k: v for k, v in readable.items() if k[1] in there}
                seen = whole
            await asyncio.sleep(self.poll_s)
