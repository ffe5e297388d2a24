"""HTTP: one Chalice Blueprint per spec section. Views parse, check privilege, call a service."""
