package controlplane

import (
	"context"

	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/vectors"
)

// vectorEmbedder lets vector collections embed text through the AI
// gateway, billed to the workspace and attributed to the project.
type vectorEmbedder struct{ s *ai.Service }

var _ vectors.Embedder = vectorEmbedder{}

// Embed embeds inputs with model (bge-small, bge-base or bge-large).
func (e vectorEmbedder) Embed(ctx context.Context, workspace, project, model string, inputs []string) ([][]float32, error) {
	a, err := e.s.EmbedAs(ctx, workspace, ai.EmbedInput{Input: inputs, Model: model, Project: project, Surface: ai.SurfaceInProcess})
	if err != nil {
		return nil, err
	}
	return a.Embeddings, nil
}
