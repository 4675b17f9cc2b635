"""The async stream shell: one stream's attempts (:class:`~sdk.Stream`), each attempt's
bookkeeping, its source, the ``on_field`` dispatcher and its path patterns, and the tracing spans;
it moves data between the backend and the sans-I/O trackers."""
