// Full-screen triangle for showing the rendered frame: no vertex buffer, positions come from
// gl_VertexID (three vertices covering the viewport).
#version 330 core

void main() {
  vec2 p = vec2(float((gl_VertexID & 1) << 2) - 1.0, float((gl_VertexID & 2) << 1) - 1.0);
  gl_Position = vec4(p, 0.0, 1.0);
}
