"""Reading a trace: node views (`nodes`), graph queries over the columns (`queries`),
printing (`show`, with the value formatting in `values`) and `validate`."""
