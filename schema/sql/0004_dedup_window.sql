-- Dead letters and rule versions are written with insert deduplication
-- tokens like the events and verdicts: a batch inserted again whole (a
-- replay after a crash between the commit and the ack) is dropped, so
-- that even a read without FINAL counts each row once.

ALTER TABLE dead_letters MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE rule_versions MODIFY SETTING non_replicated_deduplication_window = 1000;
