// Package deploy holds no code: its tests validate the deployment files
// beside it (docker-compose, the NATS and ClickHouse configurations, the
// Grafana provisioning, the Dockerfile, the Helm chart and the generated
// cluster DDL) against the configuration and the storage schema they
// describe. docs/deploy.md says what runs where.
package deploy
