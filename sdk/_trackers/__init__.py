"""The sans-I/O trackers: a stream's output text in, field and text events out, the schema or
constraint checked as early as the bytes allow (:class:`~sdk.FieldTracker` for JSON,
the text tracker for ``Choice``/``Regex``/``Grammar``, the segment tracker for structural tags,
and the compiled target that gives each part of an output its tracker)."""
