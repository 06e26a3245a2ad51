"""GC2PO."""
