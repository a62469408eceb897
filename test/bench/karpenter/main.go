// Karpenter's provisioning scheduler on the scheduling benchmark's input, for a side-by-side figure
// on the same machine: each run builds the topology and the scheduler and solves, as Karpenter's
// provisioner does for every batch. The first of three runs in the process is the cold one, the
// third the warm one, as Flotilla's scheduling bench counts them.
// Usage: go run . <input.json>; prints one JSON line.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	kscheduling "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/test"
)

type overhead struct {
	KubeReserved      map[string]string `json:"kubeReserved"`
	SystemReserved    map[string]string `json:"systemReserved"`
	EvictionThreshold map[string]string `json:"evictionThreshold"`
}

type offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

type instanceType struct {
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	Capacity  map[string]string `json:"capacity"`
	Overhead  overhead          `json:"overhead"`
	Offerings []offering        `json:"offerings"`
}

type pod struct {
	Name     string            `json:"name"`
	UID      string            `json:"uid"`
	Labels   map[string]string `json:"labels"`
	Requests map[string]string `json:"requests"`
}

type input struct {
	CapacityTypes []string          `json:"capacityTypes"`
	Limits        map[string]string `json:"limits"`
	Types         []instanceType    `json:"types"`
	Pods          []pod             `json:"pods"`
}

func resources(list map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, value := range list {
		out[corev1.ResourceName(name)] = resource.MustParse(value)
	}
	return out
}

// The type's labels as requirements, zone and capacity type from its available offerings, and every
// other well-known label absent, as a cloud provider must define them all.
func buildType(t instanceType) *cloudprovider.InstanceType {
	offerings := cloudprovider.Offerings{}
	zones, capacityTypes := []string{}, []string{}
	for _, o := range t.Offerings {
		offerings = append(offerings, &cloudprovider.Offering{
			Available: o.Available,
			Price:     o.Price,
			Requirements: kscheduling.NewLabelRequirements(map[string]string{
				v1.CapacityTypeLabelKey:  o.CapacityType,
				corev1.LabelTopologyZone: o.Zone,
			}),
		})
		if o.Available {
			zones = append(zones, o.Zone)
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
	}
	reqs := kscheduling.NewRequirements(
		kscheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...),
		kscheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...),
	)
	for key, value := range t.Labels {
		reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpIn, value))
	}
	for key := range v1.WellKnownLabels {
		if key != v1.NodePoolLabelKey && !reqs.Has(key) {
			reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
		}
	}
	return &cloudprovider.InstanceType{
		Name:         t.Name,
		Requirements: reqs,
		Offerings:    offerings,
		Capacity:     resources(t.Capacity),
		Overhead: &cloudprovider.InstanceTypeOverhead{
			KubeReserved:      resources(t.Overhead.KubeReserved),
			SystemReserved:    resources(t.Overhead.SystemReserved),
			EvictionThreshold: resources(t.Overhead.EvictionThreshold),
		},
	}
}

func buildPod(p pod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "default", UID: types.UID(p.UID), Labels: p.Labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: resources(p.Requests)},
		}}},
	}
}

// What the plan launches a NodeClaim as: the cheapest offering the claim allows among its candidate types.
func price(nc *scheduling.NodeClaim) float64 {
	best := -1.0
	for _, it := range nc.InstanceTypeOptions {
		offerings := it.Offerings.Available().Compatible(nc.Requirements)
		if len(offerings) == 0 {
			continue
		}
		if p := offerings.Cheapest().Price; best < 0 || p < best {
			best = p
		}
	}
	return best
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: karpenter-bench <input.json>")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", os.Args[1], err)
		os.Exit(1)
	}
	log.SetLogger(logging.NopLogger)
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())

	instanceTypes := make([]*cloudprovider.InstanceType, 0, len(in.Types))
	for _, t := range in.Types {
		instanceTypes = append(instanceTypes, buildType(t))
	}
	pods := make([]*corev1.Pod, 0, len(in.Pods))
	for _, p := range in.Pods {
		pods = append(pods, buildPod(p))
	}
	limits := v1.Limits{}
	for name, value := range in.Limits {
		limits[corev1.ResourceName(name)] = resource.MustParse(value)
	}
	nodePool := test.NodePool(v1.NodePool{Spec: v1.NodePoolSpec{
		Limits: limits,
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{
				Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: in.CapacityTypes,
			}},
		}},
	}})
	cloudProvider := fake.NewCloudProvider()
	cloudProvider.InstanceTypes = instanceTypes
	kubeClient := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, kubeClient, cloudProvider)
	byPool := map[string][]*cloudprovider.InstanceType{nodePool.Name: instanceTypes}
	pools := []*v1.NodePool{nodePool}

	solve := func() (scheduling.Results, float64) {
		start := time.Now()
		topology, err := scheduling.NewTopology(ctx, kubeClient, cluster, nil, pools, byPool, pods)
		if err != nil {
			fmt.Fprintf(os.Stderr, "topology: %s\n", err)
			os.Exit(1)
		}
		s := scheduling.NewScheduler(ctx, kubeClient, pools, cluster, nil, topology, byPool, nil,
			events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil)
		results, err := s.Solve(ctx, pods)
		if err != nil {
			fmt.Fprintf(os.Stderr, "solve: %s\n", err)
			os.Exit(1)
		}
		return results, time.Since(start).Seconds()
	}

	results, cold := solve()
	solve()
	_, warm := solve()
	cost := 0.0
	for _, nc := range results.NewNodeClaims {
		cost += price(nc)
	}
	out, _ := json.Marshal(map[string]any{
		"pods":          len(pods),
		"instanceTypes": len(instanceTypes),
		"coldSeconds":   cold,
		"warmSeconds":   warm,
		"nodes":         len(results.NewNodeClaims),
		"unschedulable": len(results.PodErrors),
		"costPerHour":   cost,
	})
	fmt.Println(string(out))
}
