"""Generated students: the demo's two, and the class of 42 the red team grades. See README.md."""
