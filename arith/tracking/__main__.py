"""`python -m arith.tracking send FOLDER`: send what a trial saved unsent (`arith.tracking.outbox`)."""

import argparse

from arith.tracking.outbox import send_unsent

parser = argparse.ArgumentParser(prog="python -m arith.tracking", description="Tracking utilities.")
commands = parser.add_subparsers(dest="command", required=True)
send = commands.add_parser("send", help="send a trial's unsent metrics (an unsent-<run id> folder)")
send.add_argument("folder")
send.add_argument("--tracking-uri", help="the store to send to (default: the one the trial used)")
args = parser.parse_args()
n = send_unsent(args.folder, args.tracking_uri)
print(f"sent {n} metric values and the run's end to {args.tracking_uri or 'its store'}")
