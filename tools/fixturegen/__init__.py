"""fixturegen: builds logdoctor's labelled journal fixtures from parts.

    python -m tools.fixturegen --out fixtures/journals --docs docs/fixtures.md

Modules: timeline (records, clock) · render (output formats) · profiles/deploy (GPUs, models, flags) ·
sglang / vllm (+ *_frames, sglang_args) start-up sequences · pyerr (tracebacks, CUDA/torch errors) ·
levers (fix values) · sg_* / vl_* / others (failure endings per cause) ·
noise · system (systemd, NVRM, OOM killer) · case (attempts -> journal + label) · catalogue (the cases) · writer.
"""
