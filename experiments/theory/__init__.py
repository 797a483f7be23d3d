"""The propositions' closed forms beside their simulations: ``claims`` renders the record of
``bornbiased theory --json`` into RESULTS.md; ``study`` declares its section."""
