"""Fault injection for crash tests, the twin of qkv's src/util/fault.ts: a process that kills itself
at a named point of its own run, so a test's kill lands at the same place however fast the machine.
Off unless QKV_FAULT is set; then it names one point, `<point>[:<key>=<value>]...`, e.g.
`step:step=12` (rank 0 has finished optimiser step 12, before its log line and checkpoint) or
`write:at=flushed:step=12:file=train-state.safetensors` (the temporary file of step 12's training
state is written and fsynced, not yet renamed; safetensors.atomic_write names its four stages).
Details are remembered from point to point (the
step stays set while its files are written); a value matches a detail equal to it or ending in
`/<value>`. `group=1` kills the whole process group (torchrun's launcher and every rank, as a power
cut would) instead of this process alone."""
import os
import signal

_SPEC = os.environ.get('QKV_FAULT')
_seen = {}


def _parse(spec):
    point, *pairs = spec.split(':')
    want, group = [], False
    for p in pairs:
        k, eq, v = p.partition('=')
        if not eq or not k or not v:
            raise ValueError(f'QKV_FAULT: expected <key>=<value> after "{point}:", got {p!r} in {spec!r}')
        if k == 'group':
            group = v == '1'
        else:
            want.append((k, v))
    return point, want, group


_FAULT = _parse(_SPEC) if _SPEC else None


def point(name, **details):
    """A named point of the run: dies here when QKV_FAULT names it."""
    if _FAULT is None:
        return
    for k, v in details.items():
        _seen[k] = str(v)
    want_point, want, group = _FAULT
    if name != want_point:
        return
    for k, v in want:
        have = _seen.get(k)
        if have is None or not (have == v or have.endswith('/' + v)):
            return
    if group:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
