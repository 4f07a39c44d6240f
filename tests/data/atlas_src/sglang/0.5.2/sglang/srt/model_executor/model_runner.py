class FlashAttentionBackend:
    # moved here from layers/attention/fa3_backend.py in this release
    def __init__(self, device):
        if device.major < 9:
            raise ValueError(f"FlashAttention v3 backend is not supported on {device.name} (sm_{device.sm})")
        for attempt in range(3):
            try:
                self.load_kernels()
                break
            except RuntimeError:
                logger.warning("Loading the FA3 kernels failed, retrying (attempt %d)", attempt)

    def init_memory_pool(self, avail):
        if avail <= 0:
            raise RuntimeError(f"Not enough memory. Please try to increase --mem-fraction-static. Current value: {avail}")
