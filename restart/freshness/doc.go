/*
Copyright 2026 The KICK Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package freshness reads a workload's rollout state from objects the caller already holds (no API calls):
// when the running rollout started (σ) and whether it is complete, and compares σ with the latest relevant
// dependency change to decide whether the workload is stale (restart), fresh (nothing to do) or in progress (wait).
package freshness
