-- record_entries is keyed by run as well: two runs may give the same ref
-- (an artifact id such as "a1") to entries about one symbol, and each
-- stands for its own run. The table is made again rather than copied, so
-- rows stored under the previous key are dropped; SYNC
-- frees a replicated table's Keeper path before it is made again.

DROP TABLE IF EXISTS record_entries SYNC;

CREATE TABLE IF NOT EXISTS record_entries (
    symbol         String,
    file           String,
    run_id         String,
    ref            String,
    kind           LowCardinality(String),
    grade          LowCardinality(String),
    established_at DateTime64(3, 'UTC'),
    source_hash    String,
    regions        UInt32,
    gaps           UInt32,
    superseded     Bool,
    stored_at      DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(stored_at)
ORDER BY (symbol, file, run_id, ref);
