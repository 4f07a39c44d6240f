class FlashAttentionBackend:
    def __init__(self, device):
        if device.major < 9:
            raise ValueError("FlashAttention v3 backend is not supported on " + device.name + " (sm_" + str(device.sm) + ")")
        try:
            self.load_kernels()
        except RuntimeError:
            raise RuntimeError("Failed to load the FA3 kernels, please reinstall sgl-kernel")
        try:
            self.tune()
        except RuntimeError:
            raise RuntimeError("Kernel autotuning did not finish in time; using defaults")
