"""Run `ragsift ARGS` (``cli``) or a script (``run``) with onnxruntime sessions whose intra-op
threads do not spin (``session.intra_op.allow_spinning=0``): an A/B probe for issue 13 target 2.

    .venv/bin/python -m bench.tools.ort_nospin cli embed CORPUS --index FILE --quiet
    .venv/bin/python -m bench.tools.ort_nospin run SCRIPT ARGS...
"""

import runpy
import sys

import onnxruntime as ort

_Orig = ort.SessionOptions


class NoSpin(_Orig):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.add_session_config_entry("session.intra_op.allow_spinning", "0")


ort.SessionOptions = NoSpin
mode = sys.argv.pop(1)
if mode == "cli":
    sys.argv = ["ragsift", *sys.argv[1:]]
    from ragsift.cli import main

    main()
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
