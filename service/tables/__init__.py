"""The table lifecycle: records, changes, the one mutation path, streams and the scheduler."""
