"""The stand-ins' shared event log (JSON lines in $STANDIN_LOG)."""
import json
import os
import threading


def log(**entry):
    path = os.environ.get("STANDIN_LOG")
    if not path:
        return
    entry["tid"] = threading.get_ident()
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")
