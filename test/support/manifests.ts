/** Small manifests the fleet tests commit to their repositories, as YAML text. */

/** A ConfigMap `name` whose `data.value` is `value`. */
export function configMapYaml(name: string, value: string): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;
}

/** The Deployment `web` (app=web) of `replicas` pods, its image on no registry: kwok runs the pods without pulling. */
export function webDeploymentYaml(replicas = 1): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.invalid/web:1}]}
`;
}
