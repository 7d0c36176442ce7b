"""`tracker=otel`: when a run ends, its spans (`evalrun.integrations.otel.spans`) go to an OTLP
endpoint over HTTP/protobuf, through the OpenTelemetry SDK's own exporter.

The whole run is read back from its directory (`RunLog`) and sent in one export, so a resumed run
is sent whole again, as a new trace. The run directory is written as always; a backend that is
missing or refuses the spans is reported once on stderr and the run ends as it would have. The
SDK is a usage mistake when missing (stopped before the run), imported only when spans are sent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from evalrun.config.schema import OtelTrackerConf
from evalrun.console import make_console, styled
from evalrun.extras import require
from evalrun.models.records import SampleRecord
from evalrun.rundir.log import RunLog

if TYPE_CHECKING:
    from pathlib import Path

    from evalrun.models.summary import Summary
    from evalrun.run.plan import RunPlan

TRACES_PATH = "/v1/traces"  # OTLP/HTTP's path for spans
EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http"


class OtelTracker:
    name = "otel"

    def __init__(
        self,
        endpoint: str = OtelTrackerConf.endpoint,  # defaults: their home is the tracker schema
        service_name: str = OtelTrackerConf.service_name,
        headers_env: Mapping[str, str] | None = None,
        timeout_s: float = OtelTrackerConf.timeout_s,
    ):
        require("opentelemetry.exporter.otlp.proto.http", "otel", "tracker=otel")
        require("opentelemetry.sdk", "otel", "tracker=otel")
        self.endpoint = endpoint.rstrip("/")
        self.service_name = service_name
        self.headers_env = {str(k): str(v) for k, v in dict(headers_env or {}).items()}
        self.timeout_s = timeout_s
        self._run_dir: Path | None = None

    def start(self, plan: RunPlan) -> None:
        self._run_dir = plan.run_dir

    def record(self, record: SampleRecord) -> None:
        return None  # the whole run is sent when it ends, read from its directory

    def finish(self, summary: Summary) -> None:
        if self._run_dir is None:
            return
        sent = send_run(RunLog.open(self._run_dir), self)
        if sent is not None:
            make_console(stderr=True, soft_wrap=True).print(
                f"{styled('[yellow]otel:[/]')} {sent}; the run is kept in {self._run_dir}",
                highlight=False,
            )

    def headers(self) -> dict[str, str]:
        """The headers to send, each value read from its variable (`headers_env`)."""
        return {header: os.environ.get(var, "") for header, var in self.headers_env.items()}


def send_run(run: RunLog, tracker: OtelTracker) -> str | None:
    """Export `run`'s spans to `tracker`'s endpoint; None when sent, else why not (one line)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from evalrun.integrations.otel.spans import run_spans

    spans = run_spans(run, tracker.service_name)
    url = tracker.endpoint + TRACES_PATH
    exporter = OTLPSpanExporter(
        endpoint=url, headers=tracker.headers() or None, timeout=tracker.timeout_s
    )
    with _exporter_log() as said:
        try:
            result = exporter.export(spans)
        except Exception as exc:  # whatever the exporter raises, the run is kept
            return f"{len(spans)} spans not sent to {url}: {type(exc).__name__}: {exc}"
        finally:
            exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        first = said[0].splitlines()[0] if said else "the endpoint did not accept them"
        why = re.sub(r",? retrying in \S+$", "", first)
        return f"{len(spans)} spans not sent to {url} ({why})"
    return None


@contextlib.contextmanager
def _exporter_log() -> Iterator[list[str]]:
    """The OTLP exporter's log lines (each retry, the final failure), kept instead of printed:
    the tracker says once why the spans were not sent, with the first of them."""
    logger = logging.getLogger(EXPORTER_LOGGER)
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield said
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
