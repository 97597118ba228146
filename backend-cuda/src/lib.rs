//! The CUDA backend (in progress).
