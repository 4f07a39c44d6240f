# a small stand-in for an engine module: the atlas build test mines it (tests/test_atlas.py)
import logging
import sys

logger = logging.getLogger(__name__)


class ServerArgs:
    def check(self):
        if self.tp_size % self.ep_size:
            raise ValueError("tp_size {} must be divisible by ep_size {}.".format(self.tp_size, self.ep_size))
        assert not (self.spec and self.pp), "Pipeline parallelism does not support speculative decoding"
        if self.bad:
            sys.exit("The server cannot start with --load-format %s" % self.fmt)
        try:
            self.hub_lookup()
        except Exception as e:
            logger.error("Failed to look up the model on the hub: %s", e)
        logger.warning("Attention backend not specified. Use %s backend by default.", self.backend)
