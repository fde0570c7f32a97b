"""The input schemas (evaluate, solve, fleet) and their resolution into catalog objects."""
