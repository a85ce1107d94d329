"""The pure planning core: facts in, target offsets and reasons out. No I/O, no clients."""
