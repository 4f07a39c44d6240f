"""Build the CUDA/NCCL/Xid/PyTorch catalogues (logdoctor/data/catalogues/)."""
