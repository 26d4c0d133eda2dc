"""Checking a model folder before it is registered ready: ``folder`` (it loads, its labels are the
task's, a probe input gets an answer of the right shape) and ``inputs`` (the held-apart inputs an ONNX
export is checked on). Mending the checks no worker will finish is ``check_sweep``."""
