"""Write tritongym problems as verl's parquet dataset (prompt, data_source, reward_model, extra_info).

    python examples/verl/prepare_data.py --problems bundled --out data/tritongym
    python examples/verl/prepare_data.py --problems path/to/KernelBench/level1 --out data/kb1 --multi-turn

Writes OUT/train.parquet and OUT/test.parquet (the same problems; ``--test`` picks another source).
``--multi-turn`` sets every row's ``agent_name`` to ``tritongym_kernel`` (the multi-turn agent loop).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from tritongym.integrations.verl import AGENT_LOOP, verl_rows, write_verl_dataset
from tritongym.problems import load_problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", default="bundled", help="bundled, a directory, a .py file or a .jsonl/.parquet")
    parser.add_argument("--test", default=None, help="problems of the test split (default: --problems)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--small", action="store_true", help="shrink the problems to their CPU sizes")
    parser.add_argument("--multi-turn", action="store_true", help=f"rows use the {AGENT_LOOP} agent loop")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    agent = AGENT_LOOP if args.multi_turn else None
    out = Path(args.out)
    for split, source in (("train", args.problems), ("test", args.test or args.problems)):
        rows = verl_rows(load_problems(source), small=args.small, split=split, agent_name=agent)
        path = write_verl_dataset(rows, out / f"{split}.parquet")
        logging.info("%s: %d rows", path, len(rows))


if __name__ == "__main__":
    main()
