"""The web face: stream events written as server-sent events for a page, and what a page is
told about an error."""
