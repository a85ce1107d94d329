"""RetentionPolicy runs: the fleet's scheduling (`fleet`), batches on one cluster
(`batches`), planning them (`planning`), one policy's run and its outcome (`run`),
applying its plan (`apply`) and the status it reports (`report`)."""
