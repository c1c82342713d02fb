"""Pure foundations: the error tree, governed models, configuration, ids, RFC 8785 JSON."""
