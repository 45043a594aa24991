-- The run × rule matrix of ponens check's summary, from the store alone:
-- every run × every rule the store knows (each version in rule_versions,
-- under the id its verdicts carry, and any rule with a verdict, such as
-- the built-in ponens.stream_integrity), with the cell's status from
-- run_rule_status, or 'satisfied' for a rule that emitted no verdict on
-- the run (it held throughout).

CREATE VIEW IF NOT EXISTS run_rule_matrix AS
SELECT
    m.run_id AS run_id,
    m.rule_id AS rule_id,
    if(empty(s.run_id), 'satisfied', toString(s.status)) AS status,
    s.seq AS seq
FROM (
    SELECT run_id, rule_id
    FROM (SELECT DISTINCT run_id FROM runs) AS r
    CROSS JOIN (
        SELECT DISTINCT if(version IN ('', '1'), rule_id, concat(rule_id, '@', version)) AS rule_id FROM rule_versions
        UNION DISTINCT
        SELECT DISTINCT rule_id FROM run_rule_status
    ) AS k
) AS m
LEFT JOIN (SELECT run_id, rule_id, status, seq FROM run_rule_status FINAL) AS s
    ON s.run_id = m.run_id AND s.rule_id = m.rule_id;
