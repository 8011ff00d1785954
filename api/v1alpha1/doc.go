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

// Package v1alpha1 holds the kick.corewire.io/v1alpha1 API: KickPolicy,
// KickRequest, NotificationPolicy and the SourceObservation record, plus the
// phase, gate-reason and condition vocabulary the controllers share.
// CRDs and deepcopy code are generated from the markers here (make generate).
//
// +kubebuilder:object:generate=true
// +groupName=kick.corewire.io
package v1alpha1
