# The API and the worker share one image; compose runs it twice with different commands.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# the workspace package (packages/client) must be known to npm before the install
COPY packages/client/package.json packages/client/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
COPY --from=build /app/contracts/artifacts ./contracts/artifacts
# markdown sources of the guides and content pages (read by dist/content/pages.js)
COPY --from=build /app/content ./content
EXPOSE 3000
CMD ["node", "dist/api/server.js"]
