"""Engine knowledge: line prefixes, phase markers, config dumps, per engine."""

ENGINE_NAMES = ("sglang", "vllm", "tgi", "trtllm", "lmdeploy")
