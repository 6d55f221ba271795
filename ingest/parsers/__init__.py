"""Format registry: parsers by format name, and content-based detection."""

from __future__ import annotations

from ingest.parsers.base import ParseContext, Parser
from ingest.parsers.dtrace import DtraceParser, SampleSeriesParser
from ingest.parsers.exim_rejectlog import EximRejectlogParser
from ingest.parsers.iostat import IostatParser
from ingest.parsers.mailbox_client import MailboxClientParser
from ingest.parsers.maillog import MaillogParser
from ingest.parsers.mta_config import MtaConfigParser
from ingest.parsers.postal import PostalParser
from ingest.parsers.postconf import PostconfParser
from ingest.parsers.queue_sizes import QueueSizesParser
from ingest.parsers.smtp_source import SmtpSourceParser
from ingest.parsers.vmstat import VmstatParser

# Add a parser here and its tables, detection and landing come with it.
PARSERS: dict[str, Parser] = {
    p.format: p
    for p in (
        PostalParser(),
        PostconfParser(),
        MtaConfigParser(),
        MaillogParser(),
        EximRejectlogParser(),
        MailboxClientParser(),
        SmtpSourceParser(),
        QueueSizesParser(),
        VmstatParser(),
        IostatParser(),
        DtraceParser(),
        SampleSeriesParser(),
    )
}

__all__ = ["PARSERS", "ParseContext", "Parser", "get_parser"]


def get_parser(fmt: str) -> Parser:
    try:
        return PARSERS[fmt]
    except KeyError:
        raise KeyError(f"unknown format {fmt!r}; known: {', '.join(sorted(PARSERS))}") from None
