-- name: EndpointHealthCreate :exec
-- Every endpoint has exactly one health row, created with it.
INSERT INTO endpoint_health (endpoint_id) VALUES (@endpoint_id);
