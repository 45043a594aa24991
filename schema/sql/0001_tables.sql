-- The stored columns: one table per kind of record. Every table is keyed by
-- what makes a row unique on its stream, so that a replayed batch replaces
-- rows instead of adding them (docs/storage.md explains each choice).

CREATE TABLE IF NOT EXISTS events (
    run_id      String,
    seq         UInt64,
    ts          DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    type        LowCardinality(String),
    agent       LowCardinality(String),
    action_type LowCardinality(String),
    target      String CODEC(ZSTD(1)),
    capability  LowCardinality(String),
    body        String CODEC(ZSTD(3)),
    stream_seq  UInt64 CODEC(Delta, ZSTD(1)),
    stored_at   DateTime('UTC') DEFAULT now() CODEC(Delta, ZSTD(1))
) ENGINE = ReplacingMergeTree(stream_seq)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq)
TTL stored_at + INTERVAL 180 DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS verdicts (
    run_id           String,
    rule_id          LowCardinality(String),
    seq              UInt64,
    ts               DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    status           Enum8('satisfied' = 1, 'violated' = 2, 'pending' = 3, 'unresolved' = 4),
    leaning          Enum8('' = 0, 'satisfy' = 1, 'violate' = 2),
    mode             Enum8('observe' = 1, 'deny' = 2, 'suspend' = 3, 'abort' = 4),
    rule_description LowCardinality(String),
    rule_version     LowCardinality(String),
    cause_subformula String CODEC(ZSTD(1)),
    cause_event      String CODEC(ZSTD(3)),
    stream_seq       UInt64 CODEC(Delta, ZSTD(1))
) ENGINE = ReplacingMergeTree(stream_seq)
PARTITION BY toYYYYMM(ts)
ORDER BY (rule_id, run_id, seq)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS run_rule_status (
    run_id  String,
    rule_id LowCardinality(String),
    seq     UInt64,
    ts      DateTime64(3, 'UTC'),
    status  Enum8('satisfied' = 1, 'violated' = 2, 'pending' = 3, 'unresolved' = 4),
    mode    Enum8('observe' = 1, 'deny' = 2, 'suspend' = 3, 'abort' = 4),
    stream_seq UInt64
) ENGINE = ReplacingMergeTree(stream_seq)
ORDER BY (run_id, rule_id);

CREATE TABLE IF NOT EXISTS runs (
    run_id     String,
    agent      SimpleAggregateFunction(max, LowCardinality(String)),
    started_at SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    ended_at   SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    outcome    SimpleAggregateFunction(max, LowCardinality(String)),
    last_seq   SimpleAggregateFunction(max, UInt64)
) ENGINE = AggregatingMergeTree
ORDER BY run_id;

CREATE TABLE IF NOT EXISTS rule_versions (
    rule_id     LowCardinality(String),
    version     String,
    description String,
    mode        Enum8('observe' = 1, 'deny' = 2, 'suspend' = 3, 'abort' = 4),
    text        String,
    formula     String CODEC(ZSTD(3)),
    text_hash   String,
    seen_at     DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(seen_at)
ORDER BY (rule_id, version);

CREATE TABLE IF NOT EXISTS dead_letters (
    stream_seq UInt64,
    ts         DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    subject    String,
    reason     LowCardinality(String),
    source     LowCardinality(String),
    error      String CODEC(ZSTD(1)),
    body       String CODEC(ZSTD(3)),
    truncated  UInt64
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY stream_seq
TTL toDateTime(ts) + INTERVAL 30 DAY;

CREATE TABLE IF NOT EXISTS record_entries (
    symbol         String,
    file           String,
    ref            String,
    kind           LowCardinality(String),
    grade          LowCardinality(String),
    established_at DateTime64(3, 'UTC'),
    source_hash    String,
    regions        UInt32,
    gaps           UInt32,
    superseded     Bool,
    run_id         String
) ENGINE = ReplacingMergeTree(established_at)
ORDER BY (symbol, file, ref);
