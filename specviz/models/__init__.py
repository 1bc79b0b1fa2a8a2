"""Models: device and dtype chosen once, loading and caching (loading.py), the embedded offline model
(offline.py), the offline models split over part packages (split_gguf.py), the packed CPU linear kernel
(cpu_linear.py), the 4-bit copy and its lean decode step (int4.py, int4_decoder.py) and v(k) measurement
(profiling.py)."""
