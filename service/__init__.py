"""tute's gRPC server: a stateless adapter around the rules engine (see ../DESIGN.md)."""
