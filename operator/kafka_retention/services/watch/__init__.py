"""What a RetentionPolicy run watches after its deletes (`watches`): unread-record
losses and risk (`loss`), tombstone safety (`tombstones`), orphan partition directories
(`orphans`, removed by `orphan_removal`)."""
