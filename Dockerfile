# The API and the worker share one image; compose runs it twice with different commands.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# the workspace packages (packages/core, packages/client) must be known to npm before the install
COPY packages/core/package.json packages/core/
COPY packages/client/package.json packages/client/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
# the workspace packages resolve to their built dist/ (the "agent-passport-built" export condition)
# instead of their TypeScript sources, for every node process of the image
ENV NODE_ENV=production HOST=0.0.0.0 NODE_OPTIONS=--conditions=agent-passport-built
COPY package.json package-lock.json ./
COPY packages/core/package.json packages/core/
COPY packages/client/package.json packages/client/
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/core/dist ./packages/core/dist
COPY --from=build /app/packages/client/dist ./packages/client/dist
COPY --from=build /app/contracts/artifacts ./contracts/artifacts
# markdown sources of the guides and content pages (read by dist/content/pages.js)
COPY --from=build /app/content ./content
# the processes run unprivileged (the node image's user, uid 1000): the image's files are root's and
# read-only to them; they write nothing to disk (the mounted deployment file must be readable by uid 1000)
USER node
EXPOSE 3000
CMD ["node", "dist/api/server.js"]
