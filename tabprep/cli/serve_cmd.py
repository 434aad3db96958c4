"""``tabprep serve``: the fitted workflow over HTTP (Starlette + uvicorn; ``pip install "tabprep[serve]"``)."""
from __future__ import annotations

import sys
from typing import Any, Tuple

import click

from .runtime import handle_errors, setup_logging, storage_options_option

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.command(context_settings=CONTEXT, short_help="Serve WF_DIR over HTTP: POST /transform, GET /health, /schema.")
@click.argument("wf_dir", metavar="WF_DIR")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port to bind.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Server processes (each loads the workflow).")
@click.option("--exclude", multiple=True, metavar="COL",
              help="Output column not to serve, e.g. the label a request does not carry (repeatable).")
@click.option("--max-body-size", "max_body", type=click.IntRange(min=1), default=1 << 20, show_default=True,
              metavar="BYTES", help="Largest request body accepted (413 above).")
@click.option("--access-log", is_flag=True, help="Log every request.")
@click.option("--stats", is_flag=True, help="Keep live per-column counters (rows, nulls, OOV, out of range): GET /stats, GET /metrics.")
@storage_options_option
@click.option("-q", "--quiet", is_flag=True, help="Only errors.")
@click.option("-v", "--verbose", is_flag=True, help="More logging.")
@click.option("--debug", is_flag=True, help="Tracebacks on errors.")
@handle_errors(sigterm=False)  # uvicorn's own SIGTERM handling finishes requests in flight
def serve(wf_dir: str, host: str, port: int, workers: int, exclude: Tuple[str, ...], max_body: int,
          access_log: bool, stats: bool, storage_options: Any, quiet: bool, verbose: bool, debug: bool) -> None:
    """Serve the fitted workflow in WF_DIR over HTTP until interrupted: Ctrl-C or SIGTERM stop
    accepting connections, finish the requests in flight (10 s at most), then exit (with the
    signal's status, as uvicorn does, so a supervisor sees why).

    \b
      POST /transform   one row {"C1": 123, "I1": 4}, {"rows": [...]} or {"columns": {...}}
                        (?cast=true converts values of another kind; 422 names a refused column)
      GET  /health      {"status": "ok"}
      GET  /schema      input schema, output schema, embedding sizes

    \b
    Example:
      tabprep serve wf/ --port 8080 --exclude label &
      curl -s localhost:8080/transform -d '{"C1": 123, "I1": 4}'
    """
    setup_logging(verbose, quiet)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise click.UsageError(f"tabprep serve needs the serve extra: pip install \"tabprep[serve]\" ({exc})")
    from ..serving.http import serve as run_server

    if not quiet:
        click.echo(f"serving {wf_dir} on http://{host}:{port} (POST /transform, GET /health, GET /schema); "
                   f"Ctrl-C to stop", err=True)
        sys.stderr.flush()
    run_server(wf_dir, host=host, port=port, workers=workers, exclude=exclude, max_body=max_body,
               access_log=access_log, storage_options=storage_options, stats=stats)
