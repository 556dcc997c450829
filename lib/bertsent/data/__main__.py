"""``python -m bertsent.data {fetch,verify,counts}``: download, check and summarise the benchmark data."""
from __future__ import annotations

import argparse
import sys

from ..paths import DOWNLOAD_DIR, data_root
from .fetch import FetchError, fetch
from .glue import GLUE_TASKS, load_glue
from .manifest import ChecksumError, load_manifest, verify_all
from .sts import STS_DATASETS, load_sts
from .transfer import TRANSFER_TASKS, load_snli, load_transfer


def _counts(data_dir) -> None:
    rows = []
    for name in STS_DATASETS:
        for split in ("train", "dev", "test") if name in ("stsb", "sickr") else ("test",):
            rows.append(("sts", name, split, len(load_sts(name, split, data_dir))))
    for name in TRANSFER_TASKS:
        rows += [("transfer", name, split, len(ex)) for split, ex in load_transfer(name, data_dir).splits.items()]
    rows += [("transfer", "snli", split, len(load_snli(split, data_dir))) for split in ("dev", "test")]
    manifest = load_manifest()
    for task in GLUE_TASKS:
        for split in ("train", "dev", "test"):
            if f"glue/{task}/{split}.tsv" in manifest:
                rows.append(("glue", task, split, len(load_glue(task, split, data_dir))))
    for group, name, split, n in rows:
        print(f"{group:<9} {name:<8} {split:<6} {n:>7}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bertsent.data", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("fetch", help="download the manifest files and check their sha256")
    p.add_argument("--dest", default=str(DOWNLOAD_DIR), help="target folder (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="download again even files that are already correct")
    p.add_argument("--mirror", help="base URL to fetch from instead of the sources, e.g. file:///path/to/data/")
    p.add_argument("--only", nargs="+", metavar="PREFIX", help="fetch only paths starting with these prefixes")
    for name, text in (("verify", "check every manifest file's presence and sha256"),
                       ("counts", "print the number of pairs/examples per dataset and split")):
        commands.add_parser(name, help=text).add_argument("--data-dir", help="data folder (default: found as usual)")
    args = parser.parse_args(argv)

    if args.command == "fetch":
        try:
            done = fetch(args.dest, force=args.force, mirror=args.mirror, only=args.only)
        except (FetchError, ChecksumError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{len(done)} files fetched into {args.dest}")
    elif args.command == "verify":
        problems = verify_all(args.data_dir)
        for problem in problems:
            print(problem)
        if problems:
            return 1
        print(f"all {len(load_manifest())} files verified in {data_root(args.data_dir)}")
    else:
        _counts(args.data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
