"""Training/serving skew in a few lines: fit a Criteo workflow (it records the training data's
profile), then compare new data with it -- once a fresh sample of the same distribution (no
drift), once with planted shifts (a scaled column, 30% of a vocabulary moved to new ids, a null
jump) -- and write the HTML reports.

    python3 examples/drift.py --rows 20000 --out /tmp/drift-example
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import tabprep as tp
from tabprep import ops
from tabprep.io.synthetic import criteo_columns, generate_criteo


def shifted_copy(src: str, dst: str, seed: int = 0) -> None:
    """``src``'s rows with I2 scaled x3, 30% of C5 moved to unseen ids and I7 40% null."""
    t = pq.read_table(src)
    rng = np.random.default_rng(seed)
    n = t.num_rows

    def put(table: pa.Table, name: str, col: Any) -> pa.Table:
        return table.set_column(table.schema.get_field_index(name), name, col)

    t = put(t, "I2", pc.multiply(t.column("I2"), 3))
    t = put(t, "C5", pc.if_else(pa.array(rng.random(n) < 0.3), pa.array(10**12 + rng.integers(0, 10**6, n)), t.column("C5")))
    t = put(t, "I7", pc.if_else(pa.array(rng.random(n) < 0.4), pa.scalar(None, pa.int64()), t.column("I7")))
    os.makedirs(dst, exist_ok=True)
    pq.write_table(t, os.path.join(dst, "part-0.parquet"))


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--out", default="/tmp/tabprep-drift-example")
    args = ap.parse_args(argv)
    train, fresh, shifted = (os.path.join(args.out, d) for d in ("train", "fresh", "shifted"))
    generate_criteo(args.rows, train, seed=0)
    generate_criteo(args.rows, fresh, seed=1)  # the same distribution, other rows
    shifted_copy(os.path.join(fresh, sorted(f for f in os.listdir(fresh) if f.endswith(".parquet"))[0]), shifted)

    cols = criteo_columns()
    wf = tp.Workflow((cols["categorical"] >> ops.Categorify())
                     + (cols["continuous"] >> ops.FillMissing() >> ops.Normalize()))
    wf.fit(train, profile=True)  # records the training profile (wf.profile_), saved under stats/
    wf.save(os.path.join(args.out, "workflow"))

    same = tp.drift(os.path.join(args.out, "workflow"), fresh)
    report = tp.drift(os.path.join(args.out, "workflow"), shifted)
    html = report.save(os.path.join(args.out, "report"))
    print(f"fresh sample: {'drift in ' + ', '.join(same.drifted) if same.drift else 'no drift'}")
    print(f"shifted data: drift in {', '.join(report.drifted)}")
    for c in report.drifted:
        e = report.columns[c]
        print(f"  {c}: " + ", ".join(f"{m} {e['metrics'][m]:.3f} > {e['thresholds'][m]}" for m in e["exceeded"]))
    print(f"report: {html}")
    return {"same": same.drifted, "shifted": report.drifted, "html": html}


if __name__ == "__main__":
    main()
