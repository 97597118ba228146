//! CUDA kernel sources (in progress).
