"""Linux sandbox backends and the kernel layers under them."""
