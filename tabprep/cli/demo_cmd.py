"""``tabprep demo``: generate Criteo-like data, fit the canonical workflow, transform, report."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional

import click

from . import progress as P
from .job import Job, folder_bytes, generate_data, load_spec, rate
from .runtime import UsageProblem, input_rows

#: the canonical Criteo workflow, as run by ``tabprep demo``
CRITEO_SPEC = """\
# The canonical Criteo workflow: 26 categorical columns encoded as contiguous ids,
# 13 continuous columns filled, clipped at 0, log-transformed and standardized (as float32, what
# models train on; Normalize's default is NVTabular's float64), plus the label.
version: 1
features:
  - columns: [{cats}]
    ops: [Categorify]
  - columns: [{conts}]
    ops: [FillMissing, {{Clip: {{min_value: 0}}}}, LogOp, {{Normalize: {{out_dtype: float32}}}}]
  - columns: [label]
""".format(cats=", ".join(f"C{i}" for i in range(1, 27)), conts=", ".join(f"I{i}" for i in range(1, 14)))

DEMO_MARKER = ".tabprep-demo"


def run_demo(rows: int, workdir: Optional[str], files: Optional[int], opts: Dict[str, Any]) -> None:
    """The body of ``tabprep demo`` (its options and help live in :mod:`tabprep.cli.main`)."""
    if workdir is not None:
        from ..io.fs import is_remote, local_path

        if is_remote(workdir):
            raise UsageProblem(f"--workdir {workdir!r}: the demo keeps its files in a local folder; to run the same job "
                               f"on object storage, give the URLs to the commands it prints: tabprep generate criteo "
                               f"--rows N --out {workdir.rstrip('/')}/raw, then tabprep fit / transform")
        workdir = local_path(workdir)  # file:// is the local folder
        wd = Path(workdir)
        if wd.exists() and any(wd.iterdir()) and not (wd / DEMO_MARKER).exists():
            raise UsageProblem(f"--workdir {workdir!r} exists and holds other files; give a new or empty folder "
                               f"(or one a previous `tabprep demo` used)")
        wd.mkdir(parents=True, exist_ok=True)
        keep = True
    else:
        wd = Path(tempfile.mkdtemp(prefix="tabprep-demo-"))
        keep = False
    (wd / DEMO_MARKER).write_text("a tabprep demo folder; `tabprep demo --workdir` may overwrite it\n")
    raw, spec_path, wf_dir, out = wd / "raw", wd / "spec.yaml", wd / "workflow", wd / "out"
    try:
        with Job(opts) as job:
            n_files = files or max(1, min(64, rows // 250_000))
            job.say(f"demo: {rows:,} synthetic Criteo rows in {wd}" + ("" if keep else " (temporary)"))
            start = time.perf_counter()
            generate_data("criteo", rows, str(raw), n_files, 0, overwrite=True)
            t_gen = time.perf_counter() - start
            job.say(f"generate: {P.count(rows, 'row')} -> {raw} ({P.count(n_files, 'file')}, {P.human(folder_bytes(str(raw)))}B) in "
                    f"{P.duration(t_gen)}{rate(rows, t_gen)}")
            spec_path.write_text(CRITEO_SPEC)
            wf = load_spec(str(spec_path))
            ds = job.dataset([str(raw)])
            fit_info = job.fit(wf, ds)
            wf.save(str(wf_dir))
            meta = job.write(ds, str(out), "parquet", wf=wf, rows=input_rows(ds), overwrite=True)
            if not job.quiet:
                from ..ops.embeddings import get_embedding_sizes

                sizes = get_embedding_sizes(wf, multihot=False)
                click.echo(f"embedding sizes (column: cardinality, dim) of {len(sizes)} categorical columns:")
                items = [f"{k}: ({c:,}, {d})" for k, (c, d) in sizes.items()]
                for i in range(0, len(items), 4):
                    click.echo("  " + "   ".join(f"{x:<22}" for x in items[i:i + 4]).rstrip())
                total = fit_info["seconds"] + meta["seconds_total"]
                click.echo(f"throughput: fit {P.human(rows / fit_info['seconds'])} rows/s, transform+write "
                           f"{P.human(rows / meta['seconds_total'])} rows/s, fit+transform "
                           f"{P.human(rows / total)} rows/s ({P.duration(total)} for {rows:,} rows)")
                if keep:
                    click.echo("the same job with commands:")
                    click.echo(f"  tabprep generate criteo --rows {rows} --out {raw} --overwrite")
                    click.echo(f"  tabprep fit {spec_path} {raw} --out {wf_dir} --overwrite")
                    click.echo(f"  tabprep transform {wf_dir} {raw} --out {out} --overwrite")
                    click.echo(f"  tabprep inspect {wf_dir}")
                else:
                    click.echo("(pass --workdir DIR to keep the data, spec, workflow and output)")
            job.finish()
    finally:
        if not keep:
            shutil.rmtree(wd, ignore_errors=True)
